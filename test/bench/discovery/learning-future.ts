import type { LearningCase } from './learning-history.js';

/**
 * The "future" half of the learning evaluation (D22.2): later buyers' needs for the services of
 * `learning-history.ts`, saying what those bought needs said in other words — no sentence of the
 * history, nor of `heldout-queries.ts`, is repeated. Written before anything was measured on it or
 * any weight of learning was chosen, and not edited afterwards.
 */

export const LEARNING_FUTURE: LearningCase[] = [
  // travel
  { service: 'flight-search', needs: ['what\'s the least expensive way to fly to Oslo from Madrid this spring', 'budget flights between two cities on specific days', 'search airline tickets sorted by price for a return journey'] },
  { service: 'visa-rules', needs: ['is a visa required for Mexicans going to the UK', 'what paperwork does a Filipino need to enter Schengen countries', 'how long can a South African stay in Thailand visa free'] },
  { service: 'flight-status', needs: ['check whether UA900 is running behind schedule', 'which gate and arrival time for tonight\'s AF22', 'is the 7am departure to Rome cancelled'] },
  { service: 'baggage', needs: ['how many bags am I allowed in the cabin with easyJet', 'will I pay extra for a second suitcase on United', 'maximum hand luggage dimensions for a budget airline'] },

  // hiring
  { service: 'salary-bench', needs: ['typical wage for a junior UX designer in Lisbon', 'what salary band should we offer a lead data scientist in Boston', 'median pay for a warehouse manager in Dallas'] },
  { service: 'cv-screen', needs: ['rank job seekers by fit to a vacancy and explain the gaps', 'filter a pile of CVs down to the strongest matches for a teacher post', 'tell me which candidates satisfy the requirements of this posting'] },
  { service: 'leave-balance', needs: ['how many holiday days can this worker still take this year', 'compute paid time off left given days already used', 'what is the outstanding vacation entitlement of an employee'] },

  // real estate
  { service: 'avm', needs: ['how much is my home worth today', 'give me a valuation for a two-room apartment in the city centre', 'approximate sale price of a detached house based on its size'] },
  { service: 'rental-yield', needs: ['what percentage return would a landlord make on this apartment', 'annual rental income relative to purchase price after expenses', 'does renting out this condo pay off'] },
  { service: 'comps', needs: ['list neighbouring properties that sold recently and their sale prices', 'sold price evidence for houses like mine', 'find recent transactions for homes comparable to a subject property'] },

  // sound and speech
  { service: 'asr', needs: ['get a text version of what was said in this audio file', 'write out the spoken words from my lecture recording', 'dictation audio into a typed document'] },
  { service: 'voice-synth', needs: ['have a natural voice say this announcement out loud', 'produce an audio narration of written text', 'convert my blog post into something people can listen to'] },
  { service: 'track-id', needs: ['tell me which track this is from a ten second clip', 'who sings the song in this recording', 'name the piece of music playing here'] },
  { service: 'sheet-music', needs: ['get written notes from a recording of me playing', 'notate the solo I played so I can print it', 'make printable sheet music from my piano audio'] },
  { service: 'vad', needs: ['mark the moments someone talks in an audio clip', 'which parts of this recording contain only background noise', 'split audio into stretches with and without voices'] },

  // vision
  { service: 'handwriting', needs: ['turn a photo of my scribbled notebook page into typed words', 'transcribe an old letter written by hand', 'extract text written with a pen from an image'] },
  { service: 'print-ocr', needs: ['get the typed text out of an image of a poster', 'what does the printed label in this photo say', 'pull text lines from a photographed document page'] },
  { service: 'restore', needs: ['make a damaged old photo look new again', 'clean up scratches and tears in a scan of a historic picture', 'restore a faded photograph from the 1950s'] },
  { service: 'colorize', needs: ['turn a black-and-white image into a colour one', 'give realistic colours to an old mono photo', 'bring colour to a vintage grey photograph'] },

  // logistics
  { service: 'parcel-track', needs: ['follow my delivery and show its latest scan', 'when will the box I ordered reach me, here is the tracking code', 'has my courier shipment left the depot'] },
  { service: 'hs-code', needs: ['which HS number should I put on the declaration for wooden toys', 'classify leather handbags for customs and tell me the duty', 'tariff heading for exporting coffee beans'] },
  { service: 'route-opt', needs: ['sequence my drop-offs so the driver covers the least distance', 'arrange deliveries into an efficient route respecting slots', 'route planning for a courier with many stops'] },

  // software operations
  { service: 'changelog', needs: ['produce the notes for our new version from the commit log', 'list features, bug fixes and breaking changes since the last tag', 'draft the what\'s new section from recent commits'] },
  { service: 'commit-msg', needs: ['what should I type as the git message for these edits', 'come up with a short message for my commit', 'summarize a patch as a conventional commit'] },
  { service: 'log-anomaly', needs: ['notice strange bursts of exceptions in production logs', 'watch log output and flag anything out of the ordinary', 'spot unexpected error patterns in my service\'s logs'] },

  // writing
  { service: 'plagiarism', needs: ['did the student lift parts of this report from the internet', 'detect copied sentences and show where they came from', 'verify a manuscript is original and not reused from other work'] },
  { service: 'ai-detect', needs: ['tell me if a language model produced this paragraph', 'is this cover letter human or AI authored', 'probability that an article came from a chatbot'] },
  { service: 'tone', needs: ['rephrase my note to be more courteous', 'help my reply sound warmer but keep the content', 'adjust a message to be more assertive'] },
  { service: 'simplify', needs: ['explain this dense policy in plain English', 'turn jargon-heavy writing into everyday words', 'lower the reading difficulty of an article'] },

  // money
  { service: 'txn-categorize', needs: ['tag my purchases by what kind of expense they are', 'group bank payments into categories like travel and food', 'classify the entries on a statement by spending area'] },
  { service: 'reconcile', needs: ['which entries in my accounts don\'t appear on the bank feed', 'compare general ledger lines with bank lines and show gaps', 'balance the books against what the bank reports'] },
  { service: 'credit-risk', needs: ['should we extend 60-day payment terms to this firm', 'rate the creditworthiness of a limited company', 'risk that a corporate client fails to pay its invoices'] },
  { service: 'credit-score', needs: ['check an individual\'s credit history and score', 'fetch the bureau report for a loan applicant who agreed', 'why is my personal credit score low'] },

  // health
  { service: 'meal-photo', needs: ['count the calories of this meal from an image', 'protein and carbs in what I am eating, here is a snapshot', 'what is the energy content of the dish in this photo'] },
  { service: 'lab-explain', needs: ['help me understand the numbers on my blood panel', 'flag abnormal readings in my test report and explain them', 'interpret cholesterol and glucose results for a patient'] },

  // land and environment
  { service: 'tides', needs: ['what time is the sea lowest at this beach on Sunday', 'tidal predictions for sailing out of a port', 'high water schedule for a coastal town'] },
  { service: 'flight-co2', needs: ['what is the climate impact of my air journey', 'kilograms of CO2 per traveller for a return flight', 'greenhouse gas from a plane trip in first class'] },

  // food
  { service: 'fridge-recipes', needs: ['suggest a meal I can make with the ingredients I have at home', 'I have potatoes, cheese and ham, what should I make', 'cook something from leftovers without shopping'] },
  { service: 'wine-pair', needs: ['a good wine to drink with roast lamb', 'pairing suggestion for spicy Thai curry', 'what wine matches a mushroom risotto'] },

  // vehicles
  { service: 'vin', needs: ['tell me the make of a car from its 17-character code', 'look up vehicle details from a VIN', 'which plant built the car with this identification number'] },
  { service: 'recall', needs: ['has the maker recalled my vehicle for a defect', 'outstanding recall campaigns for a second-hand car', 'find safety fixes that my car still needs'] },
];
